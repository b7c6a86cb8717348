import './base.css';
import './scorep.css';
import './ranks.css';
